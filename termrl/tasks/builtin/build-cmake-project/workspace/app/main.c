/* shapecalc: read shapes from stdin, print area and perimeter.
   Input lines:  circle R | rect W H | tri A B C | dist X1 Y1 X2 Y2 */
#include <stdio.h>
#include <string.h>

#include <geom/geom.h>

#ifndef GEOM_PRECISION
#error "GEOM_PRECISION must be defined by the build system"
#endif

int main(void)
{
    char line[512], kind[16];
    double a, b, c, d;
    int n;

    while (fgets(line, sizeof line, stdin)) {
        kind[0] = '\0';
        n = sscanf(line, "%15s %lf %lf %lf %lf", kind, &a, &b, &c, &d);
        if (n < 1)
            continue;
        if (strcmp(kind, "circle") == 0 && n == 2 && a >= 0) {
            printf("area %.*f perimeter %.*f\n", GEOM_PRECISION, geom_circle_area(a), GEOM_PRECISION,
                   geom_circle_perimeter(a));
        } else if (strcmp(kind, "rect") == 0 && n == 3 && a >= 0 && b >= 0) {
            printf("area %.*f perimeter %.*f\n", GEOM_PRECISION, geom_rect_area(a, b), GEOM_PRECISION,
                   geom_rect_perimeter(a, b));
        } else if (strcmp(kind, "tri") == 0 && n == 4 && geom_triangle_area(a, b, c) >= 0) {
            printf("area %.*f perimeter %.*f\n", GEOM_PRECISION, geom_triangle_area(a, b, c), GEOM_PRECISION,
                   geom_triangle_perimeter(a, b, c));
        } else if (strcmp(kind, "dist") == 0 && n == 5) {
            printf("distance %.*f\n", GEOM_PRECISION, geom_distance(a, b, c, d));
        } else {
            printf("invalid\n");
        }
    }
    return 0;
}
