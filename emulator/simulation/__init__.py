"""Campaign simulation on the virtual clock (service code: no Starlette here).

The engine is emulator.simulation.engine.Simulation (app.state.services.simulation)."""
