from renderer.cli import main

main(prog_name="gpuplane")
