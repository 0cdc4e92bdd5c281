"""The daemon: runtime paths and the lock, the JSON-RPC protocol, the socket server, its
methods, the file watcher and the service that runs them around one engine.
"""
