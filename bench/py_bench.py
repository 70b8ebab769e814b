# Pure-Python loops in the style of pyperformance (float arithmetic, recursion, dicts and
# strings, sorting, a generator pipeline, method calls), for bench/python.sh. Deterministic:
# prints one checksum line, the same on every run. Usage: py_bench.py [SCALE]
import sys


def nbody(steps):
    bodies = [[0.0, 0.0, 0.0, 0.01 * i, 0.02 * i, 0.03 * i, 1.0 + i] for i in range(5)]
    for _ in range(steps):
        for i, a in enumerate(bodies):
            for b in bodies[i + 1:]:
                dx, dy, dz = a[0] - b[0], a[1] - b[1], a[2] - b[2]
                d2 = dx * dx + dy * dy + dz * dz + 0.01
                mag = 0.001 / (d2 * d2 ** 0.5)
                a[3] -= dx * b[6] * mag
                b[3] += dx * a[6] * mag
        for a in bodies:
            a[0] += 0.001 * a[3]
            a[1] += 0.001 * a[4]
            a[2] += 0.001 * a[5]
    return round(sum(a[0] for a in bodies), 6)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def words(n):
    counts = {}
    for i in range(n):
        w = "w%d" % (i * 7919 % 1000)
        counts[w] = counts.get(w, 0) + 1
    return len(counts) + sum(len(k) for k in sorted(counts))


def sorting(n):
    xs = [(i * 2654435761) % 1000003 for i in range(n)]
    xs.sort()
    return xs[n // 2]


def pipeline(n):
    squares = (i * i for i in range(n))
    odd = (s for s in squares if s & 1)
    return sum(odd) % 1000003


class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def add(self, o):
        return Point(self.x + o.x, self.y + o.y)


def objects(n):
    p = Point(0, 0)
    one = Point(1, 2)
    for _ in range(n):
        p = p.add(one)
    return p.x + p.y


def main(scale):
    parts = [nbody(2000 * scale), fib(22) * scale, words(60000 * scale), sorting(60000 * scale),
             pipeline(200000 * scale), objects(100000 * scale)]
    print("checksum=%s" % "/".join(str(p) for p in parts))


main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
