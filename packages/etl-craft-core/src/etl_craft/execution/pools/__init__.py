"""Pools: where attempts run. The overseer and `run` reach task processes only through a Pool
(interface.py); the local provider (local.py) runs each attempt in a child process on this host."""
