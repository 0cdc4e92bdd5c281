"""Retrieval: one validated request shape, the time gate, fusion arithmetic and the query path
every shell calls. Reads the engine; never mutates it.
"""
