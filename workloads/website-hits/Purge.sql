-- Remove the pages with exactly ten hits (the manual's second transaction).
DELETE FROM website WHERE hits = 10;
