# WRONG: imports the course's reference format_error instead of writing one
from lreact.harness import format_error
