# SPDX-License-Identifier: BSD-3-Clause
# datascience_probe: numpy, scipy, pandas and matplotlib work under the default policy, and a
# figure is saved to /workspace.
import numpy as np
import pandas as pd
import scipy.linalg
import scipy.stats
import matplotlib
import matplotlib.pyplot as plt

from jailed import require_jail

require_jail()
a = np.random.default_rng(1).normal(size=(200, 200))
inv = scipy.linalg.inv(a)
assert np.allclose(a @ inv, np.eye(200), atol=1e-6)
t = scipy.stats.ttest_1samp(a.ravel(), 0.0)
df = pd.DataFrame({"x": np.arange(100), "y": np.arange(100) ** 2})
assert df.y.sum() == 328350
fig, ax = plt.subplots()
ax.plot(df.x, df.y)
fig.savefig("/workspace/plot.png")
print("backend", matplotlib.get_backend(), "pvalue", round(float(t.pvalue), 3))
print("DATASCIENCE OK", flush=True)
