"""The history store: every checked artifact remembered (a SQLite file, or a team's PostgreSQL database),
compared against and plotted."""
