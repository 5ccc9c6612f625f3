SELECT species, ROUND(AVG(bill_length_mm), 2) AS bill_length FROM penguins WHERE bill_length_mm IS NOT NULL  GROUP BY species
