"""The fold: each job's events read once into its JobRecord, held by one SessionModel; the tracker that feeds it live."""
