# A Python program with known behaviour for tests/e2e/test_python.c, run under libprof by
# CPython 3.11-3.13: CPU time shared 50/30/20 among hot_a, hot_b and hot_c, allocations in
# known functions, threads, a generator, exceptions, numpy (where it is installed) and a
# subprocess, lock waits and file I/O.
# Usage: py_work.py [cpu SECONDS] [alloc] [threads] [gen] [exc] [numpy] [sub] [locks] [io]
import sys
import threading
import time

# The lock contend() waits for, made before any thread starts: libprof knows a lock by its
# address, and a lock made later could take the address of one that a thread had waited for
# and freed (threading.Event's, in threads()), whose entry, first wait's stack included, it
# would then go on (libprof does not see locks destroyed).
CONTEND_LOCK = threading.Lock()


def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        for _ in range(300):  # SPIN-LOOP
            pass


def hot_a(total):
    spin(total * 0.5)


def hot_b(total):
    spin(total * 0.3)


def hot_c(total):
    spin(total * 0.2)


def make_blocks():
    return [bytearray(1000 + i % 7) for i in range(2000)]  # BLOCKS-LINE


def small_objects():
    return [(i, i + 1) for i in range(50000)]  # SMALL-LINE


def thread_work():
    spin(0.15)


def threads():
    ts = [threading.Thread(target=thread_work) for _ in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def gen_body(n):
    for i in range(n):
        end = time.thread_time() + 0.002
        while time.thread_time() < end:  # GEN-LOOP
            pass
        yield i


def consume():
    return sum(gen_body(100))


def raiser(i):
    raise ValueError(i)


def exc_work():
    end = time.thread_time() + 0.2
    caught = 0
    while time.thread_time() < end:
        try:
            raiser(caught)
        except ValueError:
            caught += 1
    after_exceptions()
    return caught


def after_exceptions():
    spin(0.1)


def numpy_alloc():
    import numpy
    a = numpy.ones(1 << 20)  # NUMPY-LINE
    return float(a.sum())


def locked_work(lock, turn, holds):
    # Each round, one thread takes the lock, then both pass the barrier and the other asks
    # for it while the first holds it 100 ms: a wait however late the asking thread is
    # scheduled (on a loaded machine a thread woken by the barrier ran 40 ms late, after a
    # lock held 4 ms at a time had been let go for good).
    for _ in range(3):
        if holds:
            lock.acquire()
            turn.wait()
            time.sleep(0.1)
            lock.release()
        else:
            turn.wait()
            with lock:  # LOCK-LINE
                pass
        turn.wait()  # the round is over: the next one takes the lock afresh


def contend():
    turn = threading.Barrier(2)
    ts = [threading.Thread(target=locked_work, args=(CONTEND_LOCK, turn, holds))
          for holds in (True, False)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def write_file():
    import os
    import tempfile
    fd, path = tempfile.mkstemp()
    with os.fdopen(fd, "wb") as f:
        for _ in range(20):
            f.write(b"x" * 4096)
            f.flush()  # WRITE-LINE
    os.unlink(path)


def child_work():
    spin(0.15)


def subprocess_run():
    import subprocess
    subprocess.run([sys.executable, __file__, "child"], check=True)


def main(args):
    i = 0
    while i < len(args):
        a = args[i]
        if a == "cpu":
            total = float(args[i + 1])
            i += 1
            hot_a(total)
            hot_b(total)
            hot_c(total)
        elif a == "alloc":
            keep = make_blocks()
            keep2 = small_objects()
            del keep, keep2
        elif a == "threads":
            threads()
        elif a == "gen":
            consume()
        elif a == "exc":
            exc_work()
        elif a == "numpy":
            numpy_alloc()
        elif a == "sub":
            subprocess_run()
        elif a == "locks":
            contend()
        elif a == "io":
            write_file()
        elif a == "child":
            child_work()
        i += 1


main(sys.argv[1:])
