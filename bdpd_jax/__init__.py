"""bdpd_jax: the BDPD commons-governance arena as a vectorized JAX batch simulator."""

from ._env import apply_env, configure

apply_env()

from . import kernels  # noqa: E402
from .config.game import ArenaConfig, default_config  # noqa: E402
from .kernels.policies import Policy  # noqa: E402
from .results.frames import Results  # noqa: E402
from .run.simulate import simulate  # noqa: E402
from .sweeps import sensitivity  # noqa: E402
from .sweeps.sweep import SweepResults, sweep  # noqa: E402

__all__ = ["ArenaConfig", "configure", "Policy", "Results", "SweepResults", "default_config", "kernels", "sensitivity",
           "simulate", "sweep"]
__version__ = "0.1.0"
