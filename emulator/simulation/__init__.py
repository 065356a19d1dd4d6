"""Campaign simulation on the virtual clock (service code: no Starlette here).

The campaign engine is the package `campaigns` (emulator.simulation.campaigns.engine.Simulation,
app.state.services.simulation)."""
