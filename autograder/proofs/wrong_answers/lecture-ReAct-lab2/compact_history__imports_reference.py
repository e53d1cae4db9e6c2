# WRONG: imports the course's reference compact_history instead of writing one
from lreact.harness import compact_history
