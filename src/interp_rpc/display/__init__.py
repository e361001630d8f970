"""How interp-rpc's objects look: text and HTML renderings of errors (errors)
and profiles (profile, functions, with the script and style of assets). No
IPython import: the core calls into these for _repr_html_ and
_render_traceback_, and the notebook layer reuses them."""
