# Prints the line-table test vectors of tests/unit/test_python.c for the running CPython
# (3.11 or later): python3.X tests/unit/python_vectors.py
import sys
def sample(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
        else:
            total -= 1
    try:
        x = 1 / (n - n)
    except ZeroDivisionError:
        x = None
    return [total,
            x]
co = sample.__code__
tag = "%d%d" % sys.version_info[:2]
print("static const uint8_t table_%s[] = {%s};" % (tag, ", ".join(str(b) for b in co.co_linetable)))
pts = []
for start, end, line in co.co_lines():
    for a in range(start, end, 2):
        pts.append((a, line if line is not None else 0))
print("static const int lines_%s[][2] = {%s};" % (tag, ", ".join("{%d, %d}" % p for p in pts)))
print("static const int first_%s = %d;" % (tag, co.co_firstlineno))
