"""A small least-recently-used map shared by the threads of one process (gunicorn --threads).

Every read and write holds the lock: evicting from a plain dict while another thread evicts the
same key raised KeyError.
"""

import threading
from collections import OrderedDict


class BoundedLRU:
    def __init__(self, *, max_items: int) -> None:
        self.max_items = max_items
        self._items: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str, default: object = None) -> object:
        with self._lock:
            if key not in self._items:
                return default
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: str, value: object) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
