"""The history store: every checked artifact remembered in one SQLite file, compared against and plotted."""
