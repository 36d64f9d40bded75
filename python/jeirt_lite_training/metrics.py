"""The metrics of predicted P(correct) that training chooses and reports with: those of the runtime package
(jeirt_lite._metrics), which its report prints too, so that a number means the same in both."""

from ._runtime import metrics as _metrics

ECE_BINS = _metrics.ECE_BINS
LOG_LOSS_EPS = _metrics.LOG_LOSS_EPS
METRIC_NAMES = _metrics.METRIC_NAMES
ReliabilityTable = _metrics.ReliabilityTable
accuracy = _metrics.accuracy
all_metrics = _metrics.all_metrics
brier = _metrics.brier
cell_log_losses = _metrics.cell_log_losses
expected_calibration_error = _metrics.expected_calibration_error
log_loss = _metrics.log_loss
reliability_table = _metrics.reliability_table
roc_auc = _metrics.roc_auc
