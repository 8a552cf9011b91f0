"""Plain Python models of ARC, 2Q and S3-FIFO as libCacheSim runs them, written for clarity, not speed: the
oracle where libCacheSim cannot be one (removal, which the simulator applies on invalidation: residents are
dropped, ghosts kept). Each model's `access(key, size)` returns True on a hit; sizes are entries or bytes."""

from collections import OrderedDict


class Queue:
    """Keys in order, oldest first, with the sum of their sizes."""

    def __init__(self):
        self.sizes = OrderedDict()
        self.used = 0

    def push(self, key, size):
        self.sizes[key] = size
        self.used += size

    def pop_oldest(self):
        key, size = self.sizes.popitem(last=False)
        self.used -= size
        return key, size

    def take(self, key):
        size = self.sizes.pop(key)
        self.used -= size
        return size

    def __contains__(self, key):
        return key in self.sizes


class Arc:
    def __init__(self, capacity):
        self.c = capacity
        self.t1, self.t2, self.b1, self.b2 = Queue(), Queue(), Queue(), Queue()
        self.p = 0.0
        self.found_in_b2 = False

    def access(self, key, size):
        if key in self.t1 or key in self.t2:
            self.found_in_b2 = False
            admitted_size = (self.t1 if key in self.t1 else self.t2).take(key)
            self.t2.push(key, admitted_size)  # to T2's most recent end
            return True
        ghost = key in self.b1 or key in self.b2
        if key in self.b1:
            self.found_in_b2 = False
            self.p = min(self.p + max(self.b2.used / self.b1.used, 1.0), self.c)
            self.b1.take(key)
        elif key in self.b2:
            self.found_in_b2 = True
            self.p = max(self.p - max(self.b1.used / self.b2.used, 1.0), 0.0)
            self.b2.take(key)
        if size > self.c:
            return False
        while self.t1.used + self.t2.used + size > self.c:
            if ghost:
                self.replace()
            elif self.t1.used + self.b1.used + size > self.c:
                if self.b1.used > 0:
                    self.b1.pop_oldest()
                    self.replace()
                else:
                    self.t1.pop_oldest()
            else:
                if self.t1.used + self.b1.used + self.t2.used + self.b2.used >= 2 * self.c and self.b2.used > 0:
                    self.b2.pop_oldest()
                self.replace()
        if ghost:
            self.found_in_b2 = False
        (self.t2 if ghost else self.t1).push(key, size)
        return False

    def replace(self):
        t1 = self.t1.used
        if (t1 > 0 and (t1 > self.p or (t1 == self.p and self.found_in_b2))) or self.t2.used == 0:
            self.b1.push(*self.t1.pop_oldest())
        else:
            self.b2.push(*self.t2.pop_oldest())

    def remove(self, key):
        for q in (self.t1, self.t2):
            if key in q:
                q.take(key)
                return True
        return False


class TwoQ:
    def __init__(self, capacity, kin=0.25, kout=0.5):
        self.c = capacity
        self.ain_cap, self.aout_cap = int(capacity * kin), int(capacity * kout)
        self.am_cap = capacity - self.ain_cap
        self.ain, self.aout, self.am = Queue(), Queue(), Queue()

    def access(self, key, size):
        if key in self.ain:
            return True
        if key in self.am:
            self.am.sizes.move_to_end(key)
            return True
        returning = key in self.aout
        if returning:
            self.aout.take(key)
        if size > self.ain_cap or size > self.c:
            return False
        while self.ain.used + self.am.used + size > self.c:
            if self.ain.used > self.ain_cap or not self.am.sizes:
                k, s = self.ain.pop_oldest()
                if s <= self.aout_cap:
                    while self.aout.used + s > self.aout_cap:
                        self.aout.pop_oldest()
                    self.aout.push(k, s)
            else:
                self.am.pop_oldest()
        if not returning:
            self.ain.push(key, size)
        elif size <= self.am_cap:
            while self.am.used + size > self.am_cap:
                self.am.pop_oldest()
            self.am.push(key, size)
        return False

    def remove(self, key):
        for q in (self.ain, self.am):
            if key in q:
                q.take(key)
                return True
        return False


class S3Fifo:
    def __init__(self, capacity, small_ratio=0.1, ghost_ratio=0.9, move_to_main_threshold=2):
        self.c = capacity
        self.small_cap = int(capacity * small_ratio)
        self.main_cap = capacity - self.small_cap
        self.ghost_cap = int(capacity * ghost_ratio)
        self.threshold = move_to_main_threshold
        self.small, self.main, self.ghost = Queue(), Queue(), Queue()
        self.freq = {}
        self.has_evicted = False

    def access(self, key, size):
        if key in self.small or key in self.main:
            self.freq[key] += 1
            return True
        from_ghost = key in self.ghost
        if from_ghost:
            self.ghost.take(key)
        if size > self.small_cap or size > self.c:
            return False
        while self.small.used + self.main.used + size > self.c:
            self.has_evicted = True
            if self.main.used > self.main_cap or self.small.used == 0:
                self.evict_main()
            else:
                self.evict_small()
        if from_ghost:
            self.main.push(key, size)
        elif size < self.small_cap:
            full = self.small.used >= self.small_cap
            (self.main if full and not self.has_evicted else self.small).push(key, size)
        else:
            return False
        self.freq[key] = 0
        return False

    def evict_small(self):
        while self.small.used > 0:
            key, size = self.small.pop_oldest()
            if self.freq[key] >= self.threshold:
                self.main.push(key, size)
                self.freq[key] = 0
                continue
            del self.freq[key]
            if size <= self.ghost_cap:
                while self.ghost.used + size > self.ghost_cap:
                    self.ghost.pop_oldest()
                self.ghost.push(key, size)
            return

    def evict_main(self):
        while self.main.used > 0:
            key, size = self.main.pop_oldest()
            if self.freq[key] == 0:
                del self.freq[key]
                return
            self.main.push(key, size)
            self.freq[key] = min(self.freq[key], 3) - 1

    def remove(self, key):
        for q in (self.small, self.main):
            if key in q:
                q.take(key)
                del self.freq[key]
                return True
        return False


MODELS = {"arc": Arc, "2q": TwoQ, "s3fifo": S3Fifo}
