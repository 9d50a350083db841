"""The notebooks' helpers: redraw a results folder, re-derive its comparisons, name the start models, check the
validation histories (research code; the notebooks import `redraw` from here)."""
