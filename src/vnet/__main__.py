"""python -m vnet"""

from vnet.cli import main

if __name__ == "__main__":  # not in a worker process spawned from it (observe.py)
    main()
