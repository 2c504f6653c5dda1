"""verl's step metrics as a table (51_logs.sh --steps, make demo): one row a
training step, the columns an operator reads first, as far as the job's log
has them; `--json` gives every metric of every step."""
import json

from ...core import metrics

# In this order, those present in at least one step: SFT's, then RL's.
COLUMNS = ("train/loss", "val/loss", "train/grad_norm", "critic/score/mean", "actor/pg_loss", "actor/grad_norm",
           "actor/kl_loss", "critic/vf_loss", "response_length/mean", "timing_s/step")


def _cell(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value if value is not None else "-")


def line(row: dict) -> str:
    """One step as a line (51_logs.sh --steps --follow, while the job runs)."""
    cells = " ".join(f"{c}={_cell(row[c])}" for c in COLUMNS if c in row)
    return f"step {int(row['step'])}: {cells}\n"


def render(log_text: str, as_json: bool = False) -> str:
    rows = metrics.step_lines(log_text)
    if as_json:
        # NaN is no JSON value: such a metric is null.
        return json.dumps([{k: None if v != v else v for k, v in {**row, "step": int(row["step"])}.items()}
                           for row in rows]) + "\n"
    if not rows:
        return "no verl step lines in this log (yet)\n"
    columns = [c for c in COLUMNS if any(c in row for row in rows)]
    table = [["step", *columns]] + [[str(int(row["step"])), *(_cell(row.get(c)) for c in columns)] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    return "".join("  ".join(cell.rjust(w) for cell, w in zip(line, widths)) + "\n" for line in table)
