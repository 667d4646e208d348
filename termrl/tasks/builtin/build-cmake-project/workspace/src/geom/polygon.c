#include <math.h>

#include <geom/geom.h>

double geom_rect_area(double w, double h)
{
    return w * h;
}

double geom_rect_perimeter(double w, double h)
{
    return 2.0 * (w + h);
}

double geom_triangle_area(double a, double b, double c)
{
    double s, q;
    if (a <= 0 || b <= 0 || c <= 0 || a + b <= c || a + c <= b || b + c <= a)
        return -1.0;
    s = (a + b + c) / 2.0;
    q = s * (s - a) * (s - b) * (s - c);
    return sqrt(q);
}

double geom_triangle_perimeter(double a, double b, double c)
{
    return a + b + c;
}
