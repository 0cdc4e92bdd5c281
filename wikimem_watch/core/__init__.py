"""The core: the vault model, parsing, tokenizing, the BM25 index and the engine that owns it.

Nothing here knows about sockets or shells; the engine is the only mutator of the index.
"""
