from aqmlab.cli import entry

entry()
