SELECT ROUND(AVG(CASE WHEN arr_delay <= 15 THEN 1.0 ELSE 0.0 END), 4) AS on_time_share FROM flights
WHERE carrier = 'B6' AND dest = 'BOS' AND month IN (1,2,3,11,12)
