"""The optional vector side: embedders, the content-addressed cache files, the cache, and the
background sync that fills it. Degrades to nothing (BM25 only) when no embedder works.
"""
