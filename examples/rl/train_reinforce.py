"""REINFORCE with a baseline, numpy only, on hpcdispatch/Scheduling-v0 (Lublin-1 by default).

The policy is the one ``policy:path=FILE.npz`` dispatches with
(:class:`hpcdispatch.dispatchers.policy.NumpyPolicy`): a small MLP scores each job of the
window from its features, and a softmax over the valid (masked) rows gives the probability
of picking it. Each episode is one sampled sequence of jobs; its return is minus its mean
bounded slowdown, given at the end. The gradient of the log-probabilities of the picks,
weighted by (return - baseline) and averaged over a batch of episodes, is applied with Adam;
the baseline is the mean return of the batch (the batch's episodes share one seed
offset so that they are scored on comparable sequences). After every batch the script
writes the policy (``--out``, ``.npz``) and the learning curve (``--plot``, PNG; ``--curve``,
CSV), the training curve being the batch's mean bounded slowdown.

    pip install ".[rl]"
    python examples/rl/train_reinforce.py --trace ../shared/traces/lublin_256.swf.gz \
        --batches 60 --episodes 8 --jobs 256 --out lublin_policy.npz --plot curve.png
    hpcdispatch compare -w ../shared/traces/lublin_256.swf.gz --max-jobs 2000 \
        -d "fcfs,f1,policy:path=lublin_policy.npz"
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from hpcdispatch.dispatchers.policy import NumpyPolicy, save_policy
from hpcdispatch.rl.env import SchedulingEnv


class Adam:
    def __init__(self, params: list[np.ndarray], lr: float):
        self.lr = lr
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, params: list[np.ndarray], grads: list[np.ndarray]) -> None:
        self.t += 1
        b1, b2 = 0.9, 0.999
        for p, g, m, v in zip(params, grads, self.m, self.v):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            mh = m / (1 - b1**self.t)
            vh = v / (1 - b2**self.t)
            p += self.lr * mh / (np.sqrt(vh) + 1e-8)  # gradient ascent on the return


def forward(policy: NumpyPolicy, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Scores of the rows of ``x`` and the activations (for the backward pass)."""
    acts = [x]
    h = x
    last = len(policy.weights) - 1
    for k, (w, b) in enumerate(zip(policy.weights, policy.biases)):
        h = h @ w + b
        if k < last:
            h = np.tanh(h)
        acts.append(h)
    return h[:, 0], acts


def grad_log_prob(
    policy: NumpyPolicy, acts: list[np.ndarray], probs: np.ndarray, action: int
) -> list[np.ndarray]:
    """d log softmax(scores)[action] / d parameters, as [dW0, db0, dW1, db1, ...]."""
    d = -probs.copy()
    d[action] += 1.0
    delta = d[:, None]  # d/d(output of the last layer)
    grads_w: list[np.ndarray] = []
    grads_b: list[np.ndarray] = []
    for k in range(len(policy.weights) - 1, -1, -1):
        grads_w.append(acts[k].T @ delta)
        grads_b.append(delta.sum(axis=0))
        if k > 0:
            delta = (delta @ policy.weights[k].T) * (1.0 - acts[k] ** 2)
    grads_w.reverse()
    grads_b.reverse()
    out: list[np.ndarray] = []
    for gw, gb in zip(grads_w, grads_b):
        out += [gw, gb]
    return out


def run_episode(
    env: SchedulingEnv, policy: NumpyPolicy, rng: np.random.Generator, seed: int, learn: bool
) -> tuple[float, list[np.ndarray] | None, float]:
    """One episode; returns its return, the summed gradient of its log-probabilities (when
    ``learn``) and its mean bounded slowdown."""
    obs, info = env.reset(seed=seed)
    total: list[np.ndarray] | None = None
    reward = 0.0
    while True:
        mask = info["action_mask"].astype(bool)
        valid = np.flatnonzero(mask)
        scores, acts = forward(policy, obs[valid])
        z = scores - scores.max()
        p = np.exp(z)
        p /= p.sum()
        k = int(rng.choice(len(valid), p=p))
        if learn:
            acts = [a for a in acts]
            g = grad_log_prob(policy, acts, p, k)
            total = g if total is None else [a + b for a, b in zip(total, g)]
        obs, reward, term, trunc, info = env.step(int(valid[k]))
        if term or trunc:
            break
    return float(reward), total, float(info["mean_bounded_slowdown"])


def write_curve(
    rows: list[tuple[int, float, float]], csv_path: Path, png_path: Path | None
) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{csv_path.name}.", dir=csv_path.parent)
    with os.fdopen(fd, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["batch", "mean_bounded_slowdown", "fcfs_mean_bounded_slowdown"])
        w.writerows(rows)
    os.replace(tmp, csv_path)
    if png_path is None:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    xs = [r[0] for r in rows]
    ax.plot(xs, [r[1] for r in rows], marker="o", ms=3, label="policy (training batches)")
    ax.plot(xs, [r[2] for r in rows], ls="--", label="FCFS on the same sequences")
    ax.set_xlabel("batch")
    ax.set_ylabel("mean bounded slowdown")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    tmp_png = png_path.with_name(f".{png_path.name}.tmp.png")
    fig.savefig(tmp_png, dpi=120)
    plt.close(fig)
    os.replace(tmp_png, png_path)


def fcfs_bsld(env: SchedulingEnv, seed: int) -> float:
    """FCFS on the episode of ``seed``: always the first job of the window."""
    obs, info = env.reset(seed=seed)
    while True:
        obs, r, term, trunc, info = env.step(0)
        if term or trunc:
            return float(info["mean_bounded_slowdown"])


def train(args: argparse.Namespace) -> list[tuple[int, float, float]]:
    env = SchedulingEnv(
        workload=args.trace,
        system=args.system,
        cleaning=args.cleaning,
        jobs=args.jobs,
        window=args.window,
        backfill=args.backfill,
    )
    policy = NumpyPolicy.random(
        hidden=tuple(args.hidden),
        seed=args.seed,
        wait_scale=env.wait_scale,
        time_scale=env.time_scale,
        window=args.window,
    )
    params = [a for pair in zip(policy.weights, policy.biases) for a in pair]
    opt = Adam(params, args.lr)
    rng = np.random.default_rng(args.seed)
    rows: list[tuple[int, float, float]] = []
    for batch in range(args.batches):
        seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=args.episodes)]
        returns, grads, bslds = [], [], []
        for s in seeds:
            ret, g, b = run_episode(env, policy, rng, s, learn=True)
            returns.append(ret)
            grads.append(g)
            bslds.append(b)
        # returns scaled by the batch's spread: bounded slowdowns range over orders of magnitude
        r = np.asarray(returns)
        adv = (r - r.mean()) / (r.std() + 1e-8)
        total = [np.zeros_like(p) for p in params]
        for a, g in zip(adv, grads):
            if g is None:
                continue
            for t, gi in zip(total, g):
                t += a * gi / args.episodes
        opt.step(params, total)
        policy.weights = params[0::2]
        policy.biases = params[1::2]
        fcfs = float(np.mean([fcfs_bsld(env, s) for s in seeds]))
        rows.append((batch, float(np.mean(bslds)), fcfs))
        print(
            f"batch {batch}: mean bounded slowdown {rows[-1][1]:.1f} (FCFS {fcfs:.1f})", flush=True
        )
        save_policy(policy, args.out)
        write_curve(rows, args.curve, args.plot)
    return rows


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = Path(__file__).resolve().parents[2]
    ap.add_argument("--trace", default=str(here.parent / "shared" / "traces" / "lublin_256.swf.gz"))
    ap.add_argument("--system", default="auto")
    ap.add_argument("--cleaning", default="rlscheduler")
    ap.add_argument("--jobs", type=int, default=256, help="jobs per episode")
    ap.add_argument("--window", type=int, default=128)
    ap.add_argument("--backfill", default="off")
    ap.add_argument("--batches", type=int, default=40)
    ap.add_argument("--episodes", type=int, default=8, help="episodes per batch")
    ap.add_argument("--hidden", type=int, nargs="*", default=[32, 16])
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("policy.npz"))
    ap.add_argument("--curve", type=Path, default=None, help="CSV (default: OUT with .csv)")
    ap.add_argument("--plot", type=Path, default=None, help="PNG (default: OUT with .png)")
    args = ap.parse_args(argv)
    args.curve = args.curve or args.out.with_suffix(".csv")
    args.plot = args.plot or args.out.with_suffix(".png")
    return args


def main(argv: list[str] | None = None) -> int:
    train(parse(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
