"""One PNG per view of a group of cases. Every function writes one file and returns its path, or
returns None when the cases hold none of the counters it draws (the report then says why).

Plots are drawn on matplotlib's non-interactive Agg backend, from Figure objects (no pyplot state).
"""

from .accum_cost import plot_accum_cost
from .bound import plot_bound_ratio
from .ceilings import plot_ceilings
from .correctness import plot_correctness
from .measured_predicted import plot_measured_predicted
from .pareto import plot_pareto
from .real_beside import plot_real_beside
from .phases import plot_step_phases
from .scaling import plot_scaling
from .timeline import TimelinePanel, TimelineRow, plot_timeline

__all__ = ["plot_accum_cost", "plot_bound_ratio", "plot_ceilings", "plot_correctness", "plot_measured_predicted", "plot_pareto", "plot_real_beside",
           "plot_step_phases", "plot_scaling", "plot_timeline", "TimelinePanel", "TimelineRow"]
