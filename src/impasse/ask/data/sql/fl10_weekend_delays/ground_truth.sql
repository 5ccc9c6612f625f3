SELECT origin, ROUND(AVG(MAX(arr_delay, 0)), 2) AS avg_delay FROM flights
WHERE CAST(strftime('%w', printf('%04d-%02d-%02d', year, month, day)) AS INTEGER) IN (0,6) AND arr_delay IS NOT NULL GROUP BY origin
