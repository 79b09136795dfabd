"""The boundary dashboard (`python dashboard.py PATH...`): a local read-only web app over run dirs
and sweep dirs. index: run dirs and the integer ids URLs use; data: the JSON of each view; server:
Starlette routes and uvicorn; export: the self-contained HTML file; main: the command line;
static/: the page (plain JS, Plotly)."""
