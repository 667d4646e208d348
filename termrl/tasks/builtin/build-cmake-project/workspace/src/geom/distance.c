#include <math.h>

#include <geom/geom.h>

double geom_distance(double x1, double y1, double x2, double y2)
{
    return hypot(x2 - x1, y2 - y1);
}
