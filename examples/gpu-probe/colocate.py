"""The co-location barrier of gpu.Profiler.ProfilePairs, for a workload's
training loop (see gpu.EnvBarrier for the protocol):

    barrier = colocate.Barrier.from_env()   # None outside ProfilePairs
    ...warm up...
    if barrier: barrier.ready()             # wait for the partner to be warm
    ...time the steps...
    if barrier: barrier.done(step)          # run untimed steps until it is done too

Run as a program it is a stand-in workload without a GPU, for tests:
"python3 colocate.py <seconds per step>" keeps the barrier around 20 timed
steps of sleeping and prints "rate: <steps per second>".
"""
import os
import sys
import time


class Barrier:
    def __init__(self, directory, ident, parties):
        self.directory, self.ident, self.parties = directory, ident, parties

    @classmethod
    def from_env(cls):
        d = os.environ.get("GPUFAIR_BARRIER")
        if not d:
            return None
        return cls(d, os.environ["GPUFAIR_BARRIER_ID"], int(os.environ["GPUFAIR_BARRIER_PARTIES"]))

    def _count(self, stage):
        return sum(1 for f in os.listdir(self.directory) if f.endswith("." + stage))

    def _arrive(self, stage):
        # Written under another name and renamed, so a partner never counts
        # a file that is not yet whole.
        path = os.path.join(self.directory, self.ident + "." + stage)
        with open(path + ".tmp", "w"):
            pass
        os.rename(path + ".tmp", path)

    def ready(self):
        """Arrive warm, and wait until every party has."""
        self._arrive("ready")
        while self._count("ready") < self.parties:
            time.sleep(0.001)

    def done(self, step):
        """Arrive done timing, and run step until every party has, so that no
        partner's timed steps run alone."""
        self._arrive("done")
        while self._count("done") < self.parties:
            step()


def main():
    per_step = float(sys.argv[1])
    barrier = Barrier.from_env()

    def step():
        time.sleep(per_step)

    if barrier:
        barrier.ready()
    start = time.perf_counter()
    for _ in range(20):
        step()
    elapsed = time.perf_counter() - start
    if barrier:
        barrier.done(step)
    print(f"rate: {20 / elapsed:.4f}")


if __name__ == "__main__":
    main()
