"""The campaign engine: members of ACTIVE campaigns walk their sequences on the virtual clock.

The engine is emulator.simulation.campaigns.engine.Simulation (app.state.services.simulation)."""
