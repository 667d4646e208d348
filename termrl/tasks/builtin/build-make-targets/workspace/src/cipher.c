#include "cipher.h"

int cipher_normalise(long shift)
{
    long s = shift % 26;
    if (s < 0)
        s += 26;
    return (int)s;
}

int cipher_shift(int c, int shift)
{
    if (c >= 'a' && c <= 'z')
        return 'a' + (c - 'a' + shift) % 26;
    if (c >= 'A' && c <= 'Z')
        return 'A' + (c - 'A' + shift) % 26;
    return c;
}
