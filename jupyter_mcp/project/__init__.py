"""What belongs to the project: the file walk and its ignore rules, project facts."""
