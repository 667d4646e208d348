#include <math.h>

#include <geom/geom.h>

static double pi(void)
{
    return acos(-1.0);
}

double geom_circle_area(double r)
{
    return pi() * r * r;
}

double geom_circle_perimeter(double r)
{
    return 2.0 * pi() * r;
}
