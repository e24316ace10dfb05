"""The settings of ``bench.api``'s web server: the embedded default's, with the floor's URLs."""

from arena.settings.local import *  # noqa: F403

ROOT_URLCONF = "bench.floor_web"
