from impasse.cli import app

app()
