#include <string.h>

#include "textkit.h"

int is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

char *tk_reverse(char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n / 2; i++) {
        char t = s[i];
        s[i] = s[n - 1 - i];
        s[n - 1 - i] = t;
    }
    return s;
}

size_t tk_word_count(const char *s)
{
    size_t n = 0;
    int in_word = 0;
    for (; *s; s++) {
        if (is_space((unsigned char)*s)) {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            n++;
        }
    }
    return n;
}

char *tk_upper(char *s)
{
    for (char *p = s; *p; p++)
        if (*p >= 'a' && *p <= 'z')
            *p = (char)(*p - 'a' + 'A');
    return s;
}
