"""Leasing a GPU: the idle window, shared readings, the lock, the picker and the guard."""
