"""Measured data, split into three pages: a link to it opens the one its query names, with the same controls."""

import streamlit as st

from specviz.app import measured, router

router.enter(__file__)  # first thing: a shared link on a fresh server (specviz.app.router)

router.forward(measured.old_route(st.query_params.to_dict()))
