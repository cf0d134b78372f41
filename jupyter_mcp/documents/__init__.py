"""The one read/write path for project files: file facts (``facts``), reads and the write
transaction (``files``), notebooks in every version nbformat reads and the ids of their cells
(``notebook_format``, which Jupyter's contents manager hands out too: ``jupyter_contents``), and
notebooks as percent-format text (``notebook_view``)."""
