"""What belongs to the project: the file walk and its ignore rules (``walk``), and what kind of
project it is and what it depends on (``detect``)."""
