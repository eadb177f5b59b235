"""The live arena: its run and phases, the lockstep batch, records, replay, persistence and the
discussion. ``arena.Arena`` is one live arena, ``live_batch.LiveBatch`` many in lockstep. Import
submodules directly (``bdpd_jax.host.live.arena`` etc.) so that importing the package stays cheap.
"""
