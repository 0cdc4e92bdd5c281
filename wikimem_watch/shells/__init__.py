"""Shells: the command line and the thin socket client. No retrieval or write logic of their
own; a command that talks to a running daemon imports only the client and the protocol.
"""
