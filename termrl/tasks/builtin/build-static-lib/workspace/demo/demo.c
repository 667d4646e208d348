/* demo: for every input line print some textkit results. */
#include <stdio.h>
#include <string.h>

#include "textkit.h"

int main(void)
{
    char line[1024], copy[1024];
    long v, prev = 0;

    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        strcpy(copy, line);
        printf("words=%zu rev=[%s]", tk_word_count(line), tk_reverse(copy));
        strcpy(copy, line);
        printf(" upper=[%s]", tk_upper(copy));
        if (tk_parse_int(line, &v) == 0) {
            printf(" int=%ld digits=%d gcd_prev=%ld", v, tk_digit_sum(v), tk_gcd(v, prev));
            prev = v;
        }
        putchar('\n');
    }
    return 0;
}
