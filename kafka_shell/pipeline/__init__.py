"""The fleet data pipeline (issue 11): snapshots of clusters as Parquet (`snapshot`), a synthetic
fleet in the same format (`synth`), and PySpark jobs over many snapshots (`jobs`) that write
health tables, plans the shell executes, trends and an HTML report (`report`).

pyarrow, pyspark and plotly come with the `pipeline` extra and are imported only inside these
modules, so the shell starts as fast without them.
"""
