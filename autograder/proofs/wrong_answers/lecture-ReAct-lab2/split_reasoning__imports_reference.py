# WRONG: borrows the course's split_reasoning instead of writing it
from lreact.replies import split_reasoning
