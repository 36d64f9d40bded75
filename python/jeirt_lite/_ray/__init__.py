"""The Ray engine's parts, behind the public `jeirt_lite.ray_engine`: `worker` the actor that scores one batch on a
worker, `dataset` the Dataset API (`score_dataset`, `forecast_dataset`, `forecast_by_dataset`), `group_sums` the
forecast per group (`--forecast-by`) summed per batch and added on the driver, and `file_run` the file-to-file run
of `jeirt-lite score --engine ray` (`score_file_on_ray`), which reads a bank without ids by `row_numbers`. Only
`ray_engine` imports them: the core package never imports Ray."""

try:
    import ray  # noqa: F401 - imported here first, so that a missing extra is named whichever part is imported
    import ray.data  # noqa: F401
except ImportError as _err:  # the extra is missing: say which one to install
    raise ImportError(  # named "ray": the command line tells this missing extra from any other failed import
        'jeirt_lite.ray_engine needs Ray Data, which is not installed: pip install "jeirt-lite[ray]"', name="ray"
    ) from _err
