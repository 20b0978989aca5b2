"""python -m vnet"""

from vnet.cli import main

main()
