from renderer.cli import run

run()
