#ifndef GEOM_GEOM_H
#define GEOM_GEOM_H

double geom_circle_area(double r);
double geom_circle_perimeter(double r);

double geom_rect_area(double w, double h);
double geom_rect_perimeter(double w, double h);

/* Triangle given by its side lengths. The area is -1 when the sides do not form a
   non-degenerate triangle. */
double geom_triangle_area(double a, double b, double c);
double geom_triangle_perimeter(double a, double b, double c);

/* Euclidean distance between (x1, y1) and (x2, y2). */
double geom_distance(double x1, double y1, double x2, double y2);

#endif
