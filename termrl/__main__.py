from termrl.cli import main

main()
