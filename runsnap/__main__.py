"""``python -m runsnap``."""

from runsnap.entry import main

if __name__ == "__main__":
    main()
