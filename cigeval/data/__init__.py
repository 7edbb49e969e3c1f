"""Data files shipped with cigeval (see the README in each folder for source and license)."""
